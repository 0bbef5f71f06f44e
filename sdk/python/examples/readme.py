import execfarm

with execfarm.connect() as ef:                     # a configured server, else an embedded one
    r = ef.run("print(6 * 7)", runtime="python", memory="256Mi", timeout=10)
    print(r.exit_code, r.stdout, r.termination_reason)          # 0 '42\n' 'exited'
    with ef.create_sandbox(runtime="shell", ttl=600, labels={"task": "demo"}) as sbx:
        sbx.files.write("in/data.txt", b"hello")
        out = sbx.exec("tr a-z A-Z < in/data.txt", on_stdout=lambda chunk: print(chunk, end=""))
        print(out.exit_code, sbx.files.read("in/data.txt"))     # 0 b'hello'
