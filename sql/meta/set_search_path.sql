-- Points unqualified names at %(search_path)s until the transaction ends or this runs again.
SELECT set_config('search_path', %(search_path)s, true);
