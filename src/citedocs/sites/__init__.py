"""llms.txt documentation sites: the registry, page fetching and chunking, and the link ranker."""
