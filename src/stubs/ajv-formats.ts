/** Stands in for ajv-formats in the bundled bin (see stubs/ajv.ts). */
export default function addFormats(): never {
  throw new Error("ajv-formats is not bundled with skills-mcp")
}
