SELECT to_regclass('registry_mirror.origins') IS NOT NULL
    AND to_regclass('registry_mirror.mirror') IS NOT NULL;
