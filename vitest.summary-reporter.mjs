/**
 * Prints one plain closing line, "tests: N passed, N failed[, N skipped]", that any CI
 * can read regardless of the test runner.
 */
export default class SummaryReporter {
  onTestRunEnd(testModules) {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed += 1;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed += 1;
        else if (state === 'failed') counts.failed += 1;
        else counts.skipped += 1;
      }
    }
    const skipped = counts.skipped ? `, ${counts.skipped} skipped` : '';
    process.stdout.write(`\ntests: ${counts.passed} passed, ${counts.failed} failed${skipped}\n`);
  }
}
