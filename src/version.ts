/** The package version (kept equal to package.json's by a test). */
export const VERSION = "0.1.0"
/** The server's name in `initialize` and in its log messages to the client. */
export const SERVER_NAME = "skills-mcp"
