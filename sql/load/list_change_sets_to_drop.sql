-- Returns the generations whose change sets are kept past the newest %(keep)s, oldest first
-- (docs/api.md, Changes since any generation), the order they are dropped in: whenever a drop is
-- under way or was cut short, the change sets still kept are the newest ones, contiguous after the
-- oldest since. registry_meta.generations is tiny (one row per load).
SELECT retired.generation
FROM (SELECT generation
      FROM registry_meta.generations
      WHERE changes_dropped_at IS NULL
      ORDER BY generation DESC
      OFFSET %(keep)s::integer) AS retired
ORDER BY retired.generation;
