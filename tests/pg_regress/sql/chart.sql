-- ask.chart(): a query's result as an SVG chart when it suits one (a time or a category column
-- and numeric columns), NULL with a NOTICE saying why when it does not; the query runs as
-- ask.query() runs it: the guard's check, read-only, as the caller.
CREATE SCHEMA chart;
CREATE TABLE chart.reviews (id int PRIMARY KEY, cuisine text, stars int, written_on date);
INSERT INTO chart.reviews VALUES
    (1, 'Italian', 5, '2022-03-01'), (2, 'Italian', 4, '2023-05-02'), (3, 'Japanese', 3, '2023-07-09'),
    (4, 'French', 5, '2024-01-15'), (5, 'Japanese', 4, '2024-02-20'), (6, 'Italian', 2, '2024-06-30');
-- Reviews per year: a line over a number named like a time unit.
WITH c AS (SELECT ask.chart($$SELECT extract(year FROM written_on)::int AS year, count(*) AS reviews
                              FROM chart.reviews GROUP BY 1$$) AS svg)
SELECT svg LIKE '<svg%' AS svg, svg LIKE '%reviews by year%' AS default_title,
       svg LIKE E'%\n2023\n%' AS year_label, svg LIKE '%<polyline%' OR svg LIKE '%<path%' AS line
FROM c;
-- Average rating per cuisine: bars over a text column, in the result's order, with a title.
WITH c AS (SELECT ask.chart($$SELECT cuisine, avg(stars) AS avg_stars FROM chart.reviews GROUP BY 1 ORDER BY 2 DESC$$,
                            title => 'average stars per cuisine') AS svg)
SELECT svg LIKE '%average stars per cuisine%' AS title, svg LIKE E'%\nItalian\n%' AS italian,
       svg LIKE E'%\nFrench\n%' AS french, svg LIKE '%avg_stars%' AS y_axis
FROM c;
-- Dates are times: a line in date order.
SELECT ask.chart('SELECT written_on, stars FROM chart.reviews') LIKE E'%\n202_-__-__\n%' AS dates;
-- Results that do not suit a chart: NULL and a NOTICE with the reason.
SELECT ask.chart('SELECT count(*) FROM chart.reviews') IS NULL AS one_row;
SELECT ask.chart('SELECT cuisine, written_on FROM chart.reviews') IS NULL AS two_axes;
SELECT ask.chart('SELECT id, stars FROM chart.reviews') IS NULL AS no_axis;
SELECT ask.chart('SELECT cuisine, stars FROM chart.reviews') IS NULL AS repeated;
SELECT ask.chart(NULL) IS NULL AS null_in_null_out;
-- Data cannot break out of the picture.
SELECT ask.chart($$VALUES ('<script>alert(1)</script>', 1), ('a&b', 2)$$) NOT LIKE '%<script%' AS escaped;
SELECT ask.chart($$VALUES ('a', 1e308::float8), ('b', -1e308::float8)$$) IS NULL AS too_large;
-- Refused as ask.query() refuses (2F003), errors of the statement with their own SQLSTATE.
SELECT * FROM error_of($$SELECT ask.chart('DELETE FROM chart.reviews')$$);
SELECT * FROM error_of($$SELECT ask.chart('SELECT ''a'' AS k, pg_advisory_lock(1) AS n')$$);
SELECT * FROM error_of($$SELECT ask.chart('SELECT cuisine, starz FROM chart.reviews')$$);
-- As the caller: a role without privileges is refused; row-level security decides what is drawn.
CREATE ROLE chart_nobody;
SET ROLE chart_nobody;
SELECT * FROM error_of($$SELECT ask.chart('SELECT cuisine, stars FROM chart.reviews')$$);
RESET ROLE;
CREATE ROLE chart_owner;
ALTER TABLE chart.reviews OWNER TO chart_owner;
GRANT USAGE ON SCHEMA chart TO chart_owner, chart_nobody;
GRANT SELECT ON chart.reviews TO chart_nobody;
ALTER TABLE chart.reviews ENABLE ROW LEVEL SECURITY;
CREATE POLICY chart_not_french ON chart.reviews FOR SELECT USING (cuisine <> 'French');
SET ROLE chart_nobody;
WITH c AS (SELECT ask.chart('SELECT cuisine, max(stars) AS best FROM chart.reviews GROUP BY 1 ORDER BY 1') AS svg)
SELECT svg LIKE E'%\nItalian\n%' AS italian, svg NOT LIKE '%French%' AS french_hidden FROM c;
RESET ROLE;
-- A hostile role's domain in the path: its CHECK would run as the caller; the guard refuses it.
CREATE ROLE chart_hostile;
CREATE SCHEMA chart_h AUTHORIZATION chart_hostile;
SET ROLE chart_hostile;
CREATE FUNCTION chart_h.probe(int) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE DOMAIN chart_h.n AS int CHECK (chart_h.probe(VALUE));
GRANT USAGE ON SCHEMA chart_h TO PUBLIC;
RESET ROLE;
SET ROLE chart_nobody;
SELECT code FROM error_of($$SELECT ask.chart('SELECT cuisine, stars::chart_h.n FROM chart.reviews')$$);
RESET ROLE;
DROP SCHEMA chart CASCADE;
DROP SCHEMA chart_h CASCADE;
DROP ROLE chart_nobody, chart_owner, chart_hostile;
