"""Team work through git (DESIGN.md §9): conflict markers, merge drivers, sync.

- :mod:`kb.merge.markers` — unresolved conflicts and in-progress git operations
  (a KB file with markers is one diagnostic; writes refuse while either holds);
- :mod:`kb.merge.tree` — the block-level three-way merge of tree.md;
- :mod:`kb.merge.drivers` — git merge drivers for tree.md and DASHBOARD.md and
  their registration in a clone's git config and ``.gitattributes``;
- :mod:`kb.merge.collide` — IDs a branch adds that its target already has;
- :mod:`kb.merge.renumber` — renumbering a branch's colliding IDs with every reference.
"""
