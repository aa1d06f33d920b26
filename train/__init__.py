"""SimCSE training (installed as lwap.train)."""
