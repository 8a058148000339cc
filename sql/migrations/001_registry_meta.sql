-- The registry's own bookkeeping, beside the graph schema that every load rebuilds.
-- registry_meta.schema_migrations itself is created by the migration runner.
CREATE TABLE registry_meta.graph_loads (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    loaded_at   timestamptz NOT NULL DEFAULT now(),
    schema_version integer NOT NULL,
    elapsed_ms  integer NOT NULL,
    counts      jsonb NOT NULL
);

-- Roles made by `registry db create-reader`: every load grants them SELECT on the new graph.
CREATE TABLE registry_meta.reader_roles (
    role_name  text PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now()
);
