/**
 * Stands in for fast-check in the bundled bin. Effect's Schema module imports its Arbitrary
 * module, which imports fast-check; the server never builds an arbitrary, so fast-check would
 * only add its module set-up to every start. Nothing is exported: a use fails at once.
 */
export {}
