-- ask.explain_sql(): what a query does in plain words, from its parse; any role, no table read;
-- refusals for what is not one query.
CREATE ROLE explain_sql_nobody;
SET ROLE explain_sql_nobody;
SELECT ask.explain_sql($$SELECT count(*) FROM restaurants WHERE city = 'San Francisco' AND closed_on IS NULL$$);
SELECT ask.explain_sql($$SELECT c.name, avg(r.rating) FROM restaurants r JOIN cities c ON c.id = r.city_id
                          WHERE r.cuisine IN ('Italian', 'French') GROUP BY c.name HAVING count(*) > 2
                          ORDER BY 2 DESC LIMIT 5$$);
SELECT ask.explain_sql($$SELECT name FROM restaurants r WHERE NOT EXISTS (SELECT 1 FROM chefs ch WHERE ch.restaurant_id = r.id)$$);
SELECT ask.explain_sql(E'SELECT name FROM t WHERE note = \'a\nb\'\'; DROP TABLE t; --\'');
SELECT * FROM error_of($$SELECT ask.explain_sql('DELETE FROM restaurants')$$);
SELECT * FROM error_of($$SELECT ask.explain_sql('SELECT 1; SELECT 2')$$);
SELECT * FROM error_of($$SELECT ask.explain_sql('SELEC name')$$);
SELECT ask.explain_sql(NULL) IS NULL AS null_in_null_out;
RESET ROLE;
DROP ROLE explain_sql_nobody;
