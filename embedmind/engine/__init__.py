"""The engine: operations over a backend session (recall, and the one commit path)."""
