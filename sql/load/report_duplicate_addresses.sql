-- Returns (line, field, problem, total) for each second allocation of an address.
SELECT source_line AS line, 'network.station.channel' AS field,
       'address ' || concat_ws('.', network, station, channel)
           || ' is already allocated (line ' || first_line || ')' AS problem,
       count(*) OVER () AS total
FROM (SELECT network, station, channel, source_line,
             min(source_line) OVER (PARTITION BY network, station, channel) AS first_line
      FROM allocations) AS addresses
WHERE source_line > first_line
ORDER BY source_line
LIMIT %(limit)s;
