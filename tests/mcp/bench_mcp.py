"""pg_ask-mcp's overhead per call, and 32 concurrent MCP sessions over HTTP.

Run by `bash tests/mcp/run.sh --bench [CALLS]` (same environment as the tests; the stand-in
LLM answers at once). Prints:
  - p50/p95 of `SELECT ask.sql(...)` on one psql session (psql's \\timing), and of the `sql`
    tool over streamable HTTP on one MCP session (the client's clock around call_tool), and
    the difference: what MCP, HTTP and pg_ask-mcp add to a call;
  - 32 sessions at once, each making CALLS `sql` calls: failures (must be 0), p50/p95, calls/s.
"""

import os
import re
import subprocess
import sys
import time

import anyio

sys.path.insert(0, os.path.dirname(__file__))
from test_mcp import DB, HOST, PORT, PSQL, HttpServer, setup_database  # noqa: E402

QUESTION = "how many cities are there?"
SESSIONS = 32


def pct(values, p):
    v = sorted(values)
    return v[round((len(v) - 1) * p)]


def line(name, ms):
    print(f"{name:<46} p50 {pct(ms, 0.5):8.2f} ms   p95 {pct(ms, 0.95):8.2f} ms   (n = {len(ms)})")


def direct(calls):
    args = [PSQL, "-h", HOST, "-p", PORT, "-U", "mcp_reader", "-d", DB, "-X", "-q", "-c", "\\timing on"]
    for _ in range(calls):
        args += ["-c", f"SELECT ask.sql('{QUESTION}')"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [float(m) for m in re.findall(r"Time: ([0-9.]+) ms", out)]


async def over_mcp(server, calls):
    times = []
    async with server.client("mcp_reader") as c:
        await c.call_tool("sql", {"question": QUESTION})  # connect, warm up
        for _ in range(calls):
            t = time.perf_counter()
            r = await c.call_tool("sql", {"question": QUESTION})
            times.append((time.perf_counter() - t) * 1000)
            assert not r.is_error, r
    return times


async def concurrent(server, calls):
    times, failures = [], []

    async def session(i):
        try:
            async with server.client("mcp_reader") as c:
                for _ in range(calls):
                    t = time.perf_counter()
                    r = await c.call_tool("sql", {"question": QUESTION})
                    times.append((time.perf_counter() - t) * 1000)
                    if r.is_error:
                        failures.append(f"session {i}: {r.content}")
        except Exception as e:  # noqa: BLE001 - counted and printed
            failures.append(f"session {i}: {e!r}")

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(SESSIONS):
            tg.start_soon(session, i)
    return times, failures, time.perf_counter() - started


async def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    setup_database()
    direct(5)  # warm up the backend's caches
    d = direct(calls)
    server = HttpServer("--max-sessions", str(SESSIONS + 4))
    try:
        m = await over_mcp(server, calls)
        print(f"pg_ask-mcp overhead per call ({calls} calls, stand-in LLM answering at once)")
        line("SELECT ask.sql(...) on a psql session", d)
        line("`sql` tool over streamable HTTP, one session", m)
        print(f"{'overhead':<46} p50 {pct(m, 0.5) - pct(d, 0.5):8.2f} ms   p95 {pct(m, 0.95) - pct(d, 0.95):8.2f} ms")
        per = max(calls // 10, 5)
        times, failures, secs = await concurrent(server, per)
        print(f"\n{SESSIONS} concurrent MCP sessions over HTTP, {per} `sql` calls each")
        line("`sql` tool, every session at once", times)
        print(f"{'calls per second':<46} {len(times) / secs:8.1f}   failures {len(failures)}")
        for f in failures[:10]:
            print("  " + f)
    finally:
        server.stop()
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    anyio.run(main)
