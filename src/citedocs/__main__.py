"""`python -m citedocs` runs the CLI."""

from citedocs.cli import main

main()
