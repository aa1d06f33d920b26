"""STS and retrieval evaluation (installed as lwap.eval)."""
