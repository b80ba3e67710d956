"""Pure research logic: the rules of the record as functions of values.

Nothing here reads or writes files, opens the index or runs git: writers
(``kb.ops``), ``kb refresh`` and the rules (``kb.checks``) all call the same
functions, so each research rule is written once.
"""
