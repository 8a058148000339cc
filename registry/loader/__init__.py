"""The loader: reading and checking graph documents, loading, rendering the read model, demo."""
