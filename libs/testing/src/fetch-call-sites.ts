// A setup file of every test project (vitest.config.mts): a fetch that fails says where it was
// called. Undici's "fetch failed" carries only its socket's stack, so a rejection nobody handled
// (vitest reports it and fails the run) named no caller, whether a test's or, in a test system
// running in the test's process, a service's.
const fetchOf = globalThis.fetch;

globalThis.fetch = function fetchNamingItsCaller(input, init) {
  const calledAt = new Error('fetch called');
  return fetchOf(input, init).catch((error: unknown) => {
    if (error instanceof Error && calledAt.stack)
      error.stack = `${error.stack}\n    -- called at:${calledAt.stack.slice(calledAt.stack.indexOf('\n'))}`;
    throw error;
  });
};
