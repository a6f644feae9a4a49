/**
 * Stands in for fast-check in the bundled bin. Effect's Schema module imports its Arbitrary
 * module (test data for property-based tests), which imports fast-check; the server never
 * builds an arbitrary, yet the bundle carried 72 KB of fast-check and ran its module-level
 * set-up at every start. Nothing is exported: a use would fail at once, not quietly.
 */
export {}
