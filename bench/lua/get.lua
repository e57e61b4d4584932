-- A plain GET (the URL given to wrk), reported like the other scripts.
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
