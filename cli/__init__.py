"""kb's command line (installed as ``kb_cli``): click commands that call the
``kb`` library and format its results as text or JSON. One module per command;
each command returns an exit code (0 clean, 1 violations or refused, 2 usage
or environment error; 3 is an internal bug)."""
