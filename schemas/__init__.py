"""marshmallow schemas: the Origin record and its blocks, the envelopes, the summaries, the query.

No Flask here. The same schemas serialize responses and generate the OpenAPI document.
"""
