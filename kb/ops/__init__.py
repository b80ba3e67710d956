"""Use cases that write: each builds new file texts, checks them, and commits."""
