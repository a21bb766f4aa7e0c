"""The MCP benchmark's client (crates/cli/benches/mcp_call.rs): the official Python SDK's
client (mcp 2.3.0) starts the server command argv[1] (a JSON list) over stdio, calls
echo argv[2] times after a warm-up, timing each call, then asks for one result of
argv[3] bytes (0: none). The process it started (the wrap, or the server itself) is
read from /proc before and after: its CPU time over the timed calls, and its peak RSS
before and after the large result; with them this client's own CPU time and how busy
the machine's cores were over the timed calls. One line of JSON on stdout."""

import json
import os
import sys
import time

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def child():
    """The process this one started (the command of argv[1])."""
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            return pid
    return None


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine():
    """The machine's CPU ticks so far: busy, and in all (idle and iowait are not busy)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:9]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def peak_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


async def main():
    command = json.loads(sys.argv[1])
    calls, big = int(sys.argv[2]), int(sys.argv[3])
    params = StdioServerParameters(command=command[0], args=command[1:], env=None)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            for i in range(50):
                await session.call_tool("echo", {"text": f"warm {i}"})
            pid = child()
            before, mine, cores = cpu(pid), time.process_time(), machine()
            took = []
            for i in range(calls):
                t = time.perf_counter_ns()
                r = await session.call_tool("echo", {"text": f"call {i}"})
                took.append((time.perf_counter_ns() - t) / 1000)
                assert not r.is_error and r.content[0].text == f"call {i}", r
            spent, mine, after = cpu(pid) - before, time.process_time() - mine, machine()
            busy = (after[0] - cores[0]) / max(1, after[1] - cores[1])
            out = {"micros": took, "cpu_s": spent, "pid": pid, "client_cpu_s": mine, "busy": busy}
            if big:
                out["rss_before_kb"] = peak_kb(pid)
                t = time.perf_counter_ns()
                r = await session.call_tool("big", {"size": big})
                out["big_ms"] = (time.perf_counter_ns() - t) / 1e6
                out["big_len"] = len(r.content[0].text)
                out["rss_after_kb"] = peak_kb(pid)
            print(json.dumps(out), flush=True)


anyio.run(main)
