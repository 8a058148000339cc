"""The HTTP layer: blueprints, the admin token hook, errors, responses, request logs, OpenAPI."""
