"""Token verification without Flask: algorithms, keys and JWKS, claims rules, development tokens."""
