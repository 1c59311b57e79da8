"""Where documents come from: local folders and llms.txt documentation sites."""
