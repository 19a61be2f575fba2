-- POST a new draft request as JSON; the body and token come from the environment.
wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Token " .. os.getenv("BENCH_TOKEN")
dofile(os.getenv("BENCH_REPORT_LUA"))
