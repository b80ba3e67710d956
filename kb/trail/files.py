"""Where the exploration graph shows in a KB: names only (no imports), so that
kb verify's rule KB241 can tell a KB without a trail cheaply."""

#: The rendered view of the graph, at the KB root (``kb trail render``).
TRAIL_FILE = "TRAIL.md"
