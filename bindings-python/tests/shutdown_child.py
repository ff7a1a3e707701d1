"""The Python child of the shutdown-hygiene check (tests/shutdown.sh): uses a RedisStore from
blocking calls and awaitables, closes it, releases it, says `closed`, and returns when told to."""

import asyncio
import gc
import os
import sys

import throttlekit as tk


async def main() -> None:
    store = tk.RedisStore(os.environ["THROTTLEKIT_REDIS_URL"])
    limiter = tk.Limiter(tk.Strategy.gcra(100, 1000), store=store, prefix="shutdown")
    for i in range(10):
        limiter.check_sync(f"k{i}")
        await limiter.check(f"k{i}")
    print("working", flush=True)
    sys.stdin.readline()
    await store.close()
    # close() alone leaves one connection of core's store open (docs/hardening.md); the last
    # reference going releases everything.
    del limiter, store
    gc.collect()


asyncio.run(main())
print("closed", flush=True)
sys.stdin.readline()
