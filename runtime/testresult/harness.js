// The test harness of test mode, shared by the goja runtime
// (runtime/goja.RunTests, host implemented in Go) and the node runtime
// (runtime/node prelude, host implemented in JS): uvu's test registry and
// runner semantics (uvu 0.5.6 dist/index.js) reporting to host instead of
// printing. Evaluated once per run; the value is a function of host that
// returns { test, start }.
(function (host) {
	'use strict';
	const P = Promise; // the program may replace the global
	const entries = []; // { name, handler, only, skip }, in registration order
	const before = [], after = [], beforeEach = [], afterEach = [];
	const state = { __test__: '', __suite__: '' };
	let started = false;

	const register = (only, skip) => function (name, handler) {
		if (started) throw new Error('test() called after the tests started: register every test at the top level');
		entries.push({ name: name === undefined ? '' : String(name), handler, only, skip });
	};
	const hook = (list) => function (fn) {
		if (started) throw new Error('hook registered after the tests started: register hooks at the top level');
		list.push(fn);
	};

	const test = register(false, false);
	test.only = register(true, false);
	test.skip = register(false, true);
	test.before = hook(before);
	test.before.each = hook(beforeEach);
	test.after = hook(after);
	test.after.each = hook(afterEach);
	// Tests run once the program's top level has finished; test.run() of an
	// uvu file is accepted and does nothing.
	test.run = function () {};

	async function run() {
		started = true;
		if (entries.length === 0) {
			host.none();
			return;
		}
		const hasOnly = entries.some(e => e.only && !e.skip);
		const runs = entries.map(e => !e.skip && (!hasOnly || e.only));
		host.plan(entries.map(e => e.name), runs);

		host.phase('before');
		try {
			for (const h of before) await h(state);
		} catch (e) {
			host.hookFailed('before', e);
			return;
		}
		for (let i = 0; i < entries.length; i++) {
			if (!runs[i]) {
				host.skip(i);
				continue;
			}
			state.__test__ = entries[i].name;
			host.start(i);
			let failed = false, error;
			try {
				for (const h of beforeEach) await h(state);
				await entries[i].handler(state);
			} catch (e) {
				failed = true;
				error = e;
			}
			try {
				for (const h of afterEach) await h(state);
			} catch (e) {
				if (!failed) {
					failed = true;
					error = e;
				}
			}
			if (failed) host.fail(i, error);
			else host.pass(i);
		}
		state.__test__ = '';
		host.phase('after');
		try {
			for (const h of after) await h(state);
		} catch (e) {
			host.hookFailed('after', e);
			return;
		}
		host.done();
	}

	// start runs the tests once completion, the top level's promise, is
	// fulfilled.
	const start = (completion) => P.resolve(completion)
		.then(run, (e) => host.topLevelFailed(e))
		.catch((e) => host.crashed(e));
	return { test, start };
})
