"""The base output models every contract shares (:mod:`kb.contract` and the areas'
``contract`` modules, e.g. :mod:`kb.gen.contract`): an open model (extra fields
allowed) and the result of every write command."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field


class OpenModel(BaseModel):
    """A model that allows extra fields (an object's own fields follow the named ones)."""

    model_config = ConfigDict(extra="allow")


class WriteResult(OpenModel):
    """Every write command's result (kb.ops.result.OpResult); operation fields follow."""

    op: str = Field(description="the Kb-Op value, e.g. hyp.add")
    id: Optional[str] = Field(description="the main object written, when there is one")
    ids: list[str] = Field(description="the Kb-Id values of the commit")
    paths: list[str] = Field(description="repository paths written (empty: nothing changed)")
    blobs: dict[str, str] = Field(description="path -> new git blob id (what --expect takes)")
    commit: Optional[str] = Field(description="the new commit; null with --no-commit, no change "
                                              "or a dry run")
    changes: list[str] = Field(description="one human line per change")
    recovered: list[str] = Field(description="paths of an interrupted earlier write rolled back "
                                             "first")


__all__ = ["OpenModel", "WriteResult"]
