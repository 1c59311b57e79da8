"""Fakes at process boundaries: servers that speak real protocols over real sockets."""
