"""Text analysis shared by the index, the relevance gate, the citation checker and link ranking."""
