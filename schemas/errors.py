"""Error bodies (docs/api.md, Errors; docs/authentication.md)."""

from __future__ import annotations

from marshmallow import INCLUDE, Schema, fields, validate

from schemas.origin import always

INVALID_PARAMETERS = "Invalid request parameters"


class ErrorSchema(Schema):
    """404, 405, 500 and 503: success false and what went wrong."""

    success = always(False)
    error = fields.String(required=True, metadata={"description": "what went wrong"})


class InvalidParametersSchema(ErrorSchema):
    """400: each bad query parameter by name, with why it was refused."""

    error = fields.String(required=True, validate=validate.Equal(INVALID_PARAMETERS))
    details = fields.Dict(
        keys=fields.String(),
        values=fields.List(fields.String()),
        required=True,
        metadata={"description": "parameter name -> why it was refused"},
    )


class ServiceUnavailableSchema(ErrorSchema):
    """503: the database could not answer, or (an export) the instance's exports are all
    taken (docs/export.md, Capacity), with Retry-After."""

    message = fields.String(
        metadata={
            "description": "only when an export was refused: names the export limit "
            "(REGISTRY_MAX_EXPORTS)"
        }
    )


class UnauthorizedSchema(Schema):
    """401: no token, or not a valid one."""

    error = fields.String(required=True, validate=validate.Equal("Unauthorized"))


class ForbiddenSchema(Schema):
    """403: a valid token without an admin role; more fields may follow."""

    class Meta:
        unknown = INCLUDE

    error = fields.String(required=True, validate=validate.Equal("Domain admin access required"))
    message = fields.String(metadata={"description": "why access was refused"})


class GenerationDetailsSchema(Schema):
    """The generation asked for and the newest one."""

    generation = fields.Integer(required=True, metadata={"description": "the generation asked for"})
    current = fields.Integer(
        required=True, allow_none=True, metadata={"description": "the newest generation"}
    )


class GenerationGoneSchema(ErrorSchema):
    """410: the generation asked for was produced but is no longer kept (docs/api.md, Generations
    and conditional requests)."""

    error = fields.String(required=True, validate=validate.Equal("Generation no longer available"))
    details = fields.Nested(GenerationDetailsSchema, required=True)


class GenerationNotFoundSchema(ErrorSchema):
    """404: a well-formed generation this registry never produced (docs/api.md, Generations and
    conditional requests)."""

    error = fields.String(required=True, validate=validate.Equal("Generation not found"))
    details = fields.Nested(GenerationDetailsSchema, required=True)


class SinceDetailsSchema(Schema):
    """The since asked for and the newest generation."""

    since = fields.Integer(required=True, metadata={"description": "the since asked for"})
    current = fields.Integer(
        required=True, allow_none=True, metadata={"description": "the newest generation"}
    )


class SinceNotFoundSchema(ErrorSchema):
    """404: since=m, well-formed, names a generation this registry never produced (docs/api.md,
    Changes since any generation)."""

    error = fields.String(required=True, validate=validate.Equal("Generation not found"))
    details = fields.Nested(SinceDetailsSchema, required=True)


class ChangesGoneDetailsSchema(SinceDetailsSchema):
    """The since asked for, the oldest since still answered, and the newest generation."""

    oldest_since = fields.Integer(
        required=True,
        metadata={"description": "the oldest since the generation answered still answers for"},
    )


class ChangesGoneSchema(ErrorSchema):
    """410: since=m is older than the oldest since (docs/api.md, Changes since any generation):
    start again from an export."""

    error = fields.String(required=True, validate=validate.Equal("Changes no longer available"))
    details = fields.Nested(ChangesGoneDetailsSchema, required=True)
