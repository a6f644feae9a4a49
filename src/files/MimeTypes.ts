/**
 * MIME types of the files skills ship: by extension, from a table of our own rather than the
 * `mime` package (its full database costs ~4 ms of start-up, 3% of the budget for answering
 * `initialize`, and a skill folder holds a few dozen kinds of file). A file whose extension is
 * not in the table (or that has none: `Makefile`, a script with a `#!` line) is `text/plain` when
 * its bytes are text, else `application/octet-stream`. Whether a file is returned as text is
 * decided from its bytes, not its type.
 */
import * as path from "node:path"

const TYPES: Readonly<Record<string, string>> = {
  // Text and documentation
  md: "text/markdown",
  markdown: "text/markdown",
  mdx: "text/markdown",
  txt: "text/plain",
  text: "text/plain",
  log: "text/plain",
  rst: "text/x-rst",
  adoc: "text/asciidoc",
  csv: "text/csv",
  tsv: "text/tab-separated-values",
  html: "text/html",
  htm: "text/html",
  css: "text/css",
  xml: "application/xml",
  xsd: "application/xml",
  svg: "image/svg+xml",
  json: "application/json",
  jsonl: "application/jsonl",
  ndjson: "application/x-ndjson",
  yaml: "application/yaml",
  yml: "application/yaml",
  toml: "application/toml",
  ini: "text/plain",
  cfg: "text/plain",
  conf: "text/plain",
  env: "text/plain",
  dot: "text/vnd.graphviz",
  gv: "text/vnd.graphviz",
  tex: "text/x-tex",
  diff: "text/x-diff",
  patch: "text/x-diff",
  properties: "text/plain",
  // Source code and scripts
  js: "text/javascript",
  mjs: "text/javascript",
  cjs: "text/javascript",
  jsx: "text/javascript",
  ts: "text/x-typescript",
  mts: "text/x-typescript",
  cts: "text/x-typescript",
  tsx: "text/x-typescript",
  py: "text/x-python",
  rb: "text/x-ruby",
  go: "text/x-go",
  rs: "text/x-rust",
  java: "text/x-java",
  kt: "text/x-kotlin",
  swift: "text/x-swift",
  c: "text/x-c",
  h: "text/x-c",
  cpp: "text/x-c++",
  hpp: "text/x-c++",
  cs: "text/x-csharp",
  php: "application/x-httpd-php",
  pl: "text/x-perl",
  lua: "text/x-lua",
  r: "text/x-r",
  sql: "application/sql",
  sh: "application/x-sh",
  bash: "application/x-sh",
  zsh: "application/x-sh",
  ps1: "text/x-powershell",
  bat: "application/x-bat",
  // Documents
  pdf: "application/pdf",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  odt: "application/vnd.oasis.opendocument.text",
  rtf: "application/rtf",
  // Images, audio, video, fonts
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  bmp: "image/bmp",
  ico: "image/vnd.microsoft.icon",
  tif: "image/tiff",
  tiff: "image/tiff",
  avif: "image/avif",
  mp3: "audio/mpeg",
  wav: "audio/wav",
  ogg: "audio/ogg",
  flac: "audio/flac",
  mp4: "video/mp4",
  webm: "video/webm",
  mov: "video/quicktime",
  woff: "font/woff",
  woff2: "font/woff2",
  ttf: "font/ttf",
  otf: "font/otf",
  // Archives and binaries
  zip: "application/zip",
  gz: "application/gzip",
  tgz: "application/gzip",
  tar: "application/x-tar",
  bz2: "application/x-bzip2",
  xz: "application/x-xz",
  "7z": "application/x-7z-compressed",
  wasm: "application/wasm",
  bin: "application/octet-stream",
}

/**
 * A file's type: by its extension when the table knows it; otherwise `text/plain` when `isText`
 * (called only then, as it looks at the bytes) says the file is text, else
 * `application/octet-stream`, as also without `isText` (a folder listing names its files
 * without reading them).
 */
export const mimeTypeOf = (file: string, isText?: () => boolean): string =>
  TYPES[path.extname(file).slice(1).toLowerCase()] ??
  (isText?.() === true ? "text/plain" : "application/octet-stream")
