-- POST a browser form (application/x-www-form-urlencoded); the body comes from BENCH_BODY and
-- the session and CSRF cookies from wrk's -H "Cookie: ..." header.
wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
dofile(os.getenv("BENCH_REPORT_LUA"))
