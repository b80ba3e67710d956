"""Package discovery for setuptools (the metadata is in pyproject.toml).

Every package under ``kb/`` is found automatically, so a new subpackage cannot
be left out of the wheel. ``cli/`` is installed as ``kb_cli`` (no top-level
``cli`` package in site-packages); ``templates/`` and ``hooks/`` ship inside the
``kb`` package so a wheel finds them.
"""

from setuptools import find_namespace_packages, setup

RENAMED = {"kb_cli": "cli", "kb._templates": "templates", "kb._hooks": "hooks"}

setup(
    packages=find_namespace_packages(include=["kb", "kb.*"], exclude=["*.__pycache__"]) + sorted(RENAMED),
    package_dir=RENAMED,
)
