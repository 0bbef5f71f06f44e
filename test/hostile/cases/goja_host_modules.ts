// description: goja programs get no host module: require of fs,
//   child_process, net, os and relative paths is refused, process.env
//   holds nothing of the worker's environment.
// runtime: goja
// expect-state: COMPLETED
// expect-stdout-not-contains: LOADED
// expect-stdout-contains: fs: refused
// expect-stdout-contains: child_process: refused
// expect-stdout-contains: net: refused
// expect-stdout-contains: ./x.js: refused
// expect-stdout-contains: /etc/passwd: refused
// expect-stdout-not-contains: PLUGIN
// expect-stdout-not-contains: EXECFARM
for (const m of ["fs", "child_process", "net", "os", "http", "worker_threads", "./x.js", "/etc/passwd"]) {
  try {
    const x = (globalThis as any).require(m);
    console.log(`${m}: LOADED ${Object.keys(x).slice(0, 5).join(",")}`);
  } catch (e) {
    console.log(`${m}: refused`);
  }
}
console.log("env:", JSON.stringify((globalThis as any).process?.env ?? {}));
