"""The warm server: `judgegen run` served by a process that has already imported judgegen.

A cold `judgegen run` spends ~0.3 s importing (pydantic, click, asyncio, the toolkit) and
starting the sandbox's fork server before its first LLM call; on chain-bound judges that is a
tenth of the whole run. After a cold run the executable leaves a server behind (`server.py`)
that has imported what the run imported; the next `run` with the same interpreter, import
path and environment (`key.py`) is forked from it (`client.py`), with the client's own
standard streams, working folder, arguments and umask. A server whose code changed since it
imported it — or whose native libraries changed, or where an import that found nothing would
now find a module (`code_snapshot.py`) — says so and exits: nothing is ever judged with stale
code.
`JUDGEGEN_SERVER=off` turns it all off; `judgegen server stop` ends the servers.
"""
