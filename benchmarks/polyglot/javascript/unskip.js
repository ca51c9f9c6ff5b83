// Loaded by jest before each exercise's tests (--setupFilesAfterEnv): Exercism marks every
// test but the first as skipped (`xtest`, `xit`); the benchmark runs them all without
// rewriting the test file.
globalThis.xtest = globalThis.test;
globalThis.xit = globalThis.it;
