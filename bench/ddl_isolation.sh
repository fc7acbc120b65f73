#!/usr/bin/env bash
# What another role's DDL costs a victim's ask.select_tables() (issue 49, item 3): a private
# PostgreSQL 15 cluster with pg_ask preloaded; the victim reads a small schema of its own; the
# attacker has its own indexed schema, creates N tables of C columns granted to PUBLIC and
# comments on each of them. The victim's select_tables() is timed before the attack and after
# it, in read-write and read-only transactions (median of R runs in one connection).
#
#   [EMBEDDING=off|local] bash bench/ddl_isolation.sh [N=500] [C=300] [R=7]
#
# Run as root (the cluster runs as postgres). Uses the pg_ask.so and SQL installed for
# PostgreSQL 15 (`cargo pgrx install` or a `cargo pgrx test pg15` run), copied aside first; or,
# with PGROOT set, a copy of PostgreSQL 15's /usr/lib/postgresql/15 and /usr/share/postgresql/15
# under $PGROOT/usr with another build's `cargo pgrx package --out-dir` output copied over it
# (how the build before a change is measured beside the one after it).
set -euo pipefail
N=${1:-500}
C=${2:-300}
R=${3:-7}
PGROOT=${PGROOT:-}
BIN=$PGROOT/usr/lib/postgresql/15/bin
DIR=${DIR:-/var/tmp/pg_ask-bench-ddl-isolation}
PORT=${PORT:-55491}
rm -rf "$DIR"
mkdir -p "$DIR/lib"
cp "$PGROOT/usr/lib/postgresql/15/lib/pg_ask.so" "$DIR/lib/"
chown -R postgres: "$DIR"
as_pg() { runuser -u postgres -- "$@"; }
as_pg "$BIN/initdb" -D "$DIR/data" -A trust >/dev/null
cat >>"$DIR/data/postgresql.conf" <<EOF
port = $PORT
unix_socket_directories = '$DIR'
shared_preload_libraries = '$DIR/lib/pg_ask.so'
dynamic_library_path = '$DIR/lib:\$libdir'
ask.embedding_provider = '${EMBEDDING:-off}'
EOF
as_pg "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w start >/dev/null
trap 'as_pg "$BIN/pg_ctl" -D "$DIR/data" -m fast stop >/dev/null' EXIT
psql_as() { as_pg "$BIN/psql" -h "$DIR" -p "$PORT" -d postgres -X -q -v ON_ERROR_STOP=1 "$@"; }

psql_as <<'SQL'
CREATE EXTENSION pg_ask CASCADE;
CREATE ROLE victim LOGIN;
CREATE ROLE attacker LOGIN;
GRANT USAGE ON SCHEMA ask TO victim, attacker;
CREATE SCHEMA music;
CREATE TABLE music.singer (id int PRIMARY KEY, name text NOT NULL, country text);
COMMENT ON TABLE music.singer IS 'Singers who performed';
CREATE TABLE music.concert (id int PRIMARY KEY, singer_id int REFERENCES music.singer(id), venue text, year int);
CREATE TABLE music.album (id int PRIMARY KEY, singer_id int REFERENCES music.singer(id), title text);
GRANT USAGE ON SCHEMA music TO victim;
GRANT SELECT ON ALL TABLES IN SCHEMA music TO victim;
CREATE SCHEMA att AUTHORIZATION attacker;
GRANT USAGE ON SCHEMA att TO PUBLIC;
SELECT ask.index_schema(ARRAY['music']);
SET ROLE attacker;
CREATE TABLE att.seed (id int);
GRANT SELECT ON att.seed TO PUBLIC;
SELECT ask.index_schema(ARRAY['att']);
SQL

# The victim's select_tables(), timed in the backend (clock_timestamp around the call): R runs
# in one connection after a first one that loads the model and reads the catalog; prints the
# median in ms.
timed() {
  local mode=$1
  local script=""
  for _ in $(seq "$((R + 1))"); do
    script+="BEGIN $mode;
SELECT pg_catalog.set_config('bench.t', clock_timestamp()::text, true) \\g /dev/null
SELECT count(*) FROM ask.select_tables('which singers performed in concerts?', 5) \\g /dev/null
SELECT round(extract(epoch FROM clock_timestamp() - current_setting('bench.t')::timestamptz) * 1000, 1);
COMMIT;
"
  done
  as_pg "$BIN/psql" -h "$DIR" -p "$PORT" -d postgres -U victim -X -q -At -v ON_ERROR_STOP=1 <<<"$script" \
    | tail -n "$R" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
top() {
  as_pg "$BIN/psql" -h "$DIR" -p "$PORT" -d postgres -U victim -X -q -At \
    -c "SELECT string_agg(rel::text, ', ') FROM ask.select_tables('which singers performed in concerts?', 5)"
}

# A first question of each kind settles the memory (the victim's own tables stored again).
timed "READ WRITE" >/dev/null
echo "before the attack: read-write $(timed "READ WRITE") ms, read-only $(timed "READ ONLY") ms; top 5: $(top)"

comment_all() {
  as_pg "$BIN/psql" -h "$DIR" -p "$PORT" -d postgres -U attacker -X -q -v ON_ERROR_STOP=1 <<SQL
DO \$\$ BEGIN
  FOR i IN 1..$N LOOP
    EXECUTE format('COMMENT ON TABLE att.t_%s IS %L', i, 'round $1');
  END LOOP;
END \$\$;
SQL
}
start=$(date +%s.%N)
as_pg "$BIN/psql" -h "$DIR" -p "$PORT" -d postgres -U attacker -X -q -v ON_ERROR_STOP=1 <<SQL
DO \$\$ BEGIN
  FOR i IN 1..$N LOOP
    EXECUTE format('CREATE TABLE att.t_%s (%s)', i,
                   (SELECT string_agg(format('c%s int', j), ', ') FROM generate_series(1, $C) j));
    EXECUTE format('GRANT SELECT ON att.t_%s TO PUBLIC', i);
  END LOOP;
END \$\$;
SQL
comment_all 0
end=$(date +%s.%N)
notes=$(psql_as -At -c "SELECT count(*) FROM ask.schema_memory_dirty")
echo "attack: $N tables x $C columns, each commented on, in $(echo "$end - $start" | bc) s; touched notes kept: $notes"
# Read-only questions leave the notes as they are: each one meets all of them.
echo "after the attack: read-only $(timed "READ ONLY") ms; top 5: $(top)"
# A read-write question describes what it meets in the memory again: the attacker comments on
# every table again before each one, as a loop of COMMENT ON does.
rw=()
for r in $(seq "$R"); do
  comment_all "$r"
  rw+=("$(as_pg "$BIN/psql" -h "$DIR" -p "$PORT" -d postgres -U victim -X -q -At -v ON_ERROR_STOP=1 <<SQL
BEGIN READ ONLY;
SELECT count(*) FROM ask.select_tables('singers', 1) \\g /dev/null
COMMIT;
SELECT pg_catalog.set_config('bench.t', clock_timestamp()::text, false) \\g /dev/null
SELECT count(*) FROM ask.select_tables('which singers performed in concerts?', 5) \\g /dev/null
SELECT round(extract(epoch FROM clock_timestamp() - current_setting('bench.t')::timestamptz) * 1000, 1);
SQL
)")
done
echo "after the attack, each read-write question after the attacker's comments: $(printf '%s\n' "${rw[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') ms; top 5: $(top)"
