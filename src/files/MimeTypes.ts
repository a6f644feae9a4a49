/**
 * MIME types of the files skills ship: by extension, from a table of our own rather than the
 * `mime` package (whose full database slows start-up; skills ship a few dozen kinds of file).
 * A file whose extension is not in the table (or that has none: `Makefile`, a `#!` script) is
 * `text/plain` when its bytes are text, else `application/octet-stream`. Whether a file is
 * returned as text is decided from its bytes, not its type.
 */
import * as path from "node:path"

/** Extensions by type, separated by spaces. */
const EXTENSIONS: Readonly<Record<string, string>> = {
  // Text and documentation
  "text/markdown": "md markdown mdx",
  "text/plain": "txt text log ini cfg conf env properties",
  "text/x-rst": "rst",
  "text/asciidoc": "adoc",
  "text/csv": "csv",
  "text/tab-separated-values": "tsv",
  "text/html": "html htm",
  "text/css": "css",
  "application/xml": "xml xsd",
  "image/svg+xml": "svg",
  "application/json": "json",
  "application/jsonl": "jsonl",
  "application/x-ndjson": "ndjson",
  "application/yaml": "yaml yml",
  "application/toml": "toml",
  "text/vnd.graphviz": "dot gv",
  "text/x-tex": "tex",
  "text/x-diff": "diff patch",
  // Source code and scripts
  "text/javascript": "js mjs cjs jsx",
  "text/x-typescript": "ts mts cts tsx",
  "text/x-python": "py",
  "text/x-ruby": "rb",
  "text/x-go": "go",
  "text/x-rust": "rs",
  "text/x-java": "java",
  "text/x-kotlin": "kt",
  "text/x-swift": "swift",
  "text/x-c": "c h",
  "text/x-c++": "cpp hpp",
  "text/x-csharp": "cs",
  "application/x-httpd-php": "php",
  "text/x-perl": "pl",
  "text/x-lua": "lua",
  "text/x-r": "r",
  "application/sql": "sql",
  "application/x-sh": "sh bash zsh",
  "text/x-powershell": "ps1",
  "application/x-bat": "bat",
  // Documents
  "application/pdf": "pdf",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
  "application/vnd.oasis.opendocument.text": "odt",
  "application/rtf": "rtf",
  // Images, audio, video, fonts
  "image/png": "png",
  "image/jpeg": "jpg jpeg",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/bmp": "bmp",
  "image/vnd.microsoft.icon": "ico",
  "image/tiff": "tif tiff",
  "image/avif": "avif",
  "audio/mpeg": "mp3",
  "audio/wav": "wav",
  "audio/ogg": "ogg",
  "audio/flac": "flac",
  "video/mp4": "mp4",
  "video/webm": "webm",
  "video/quicktime": "mov",
  "font/woff": "woff",
  "font/woff2": "woff2",
  "font/ttf": "ttf",
  "font/otf": "otf",
  // Archives and binaries
  "application/zip": "zip",
  "application/gzip": "gz tgz",
  "application/x-tar": "tar",
  "application/x-bzip2": "bz2",
  "application/x-xz": "xz",
  "application/x-7z-compressed": "7z",
  "application/wasm": "wasm",
  "application/octet-stream": "bin",
}

const TYPES: ReadonlyMap<string, string> = new Map(
  Object.entries(EXTENSIONS).flatMap(([type, extensions]) =>
    extensions.split(" ").map((ext) => [ext, type] as const),
  ),
)

/**
 * A file's type: by its extension when the table knows it; otherwise `text/plain` when `isText`
 * (called only then, as it looks at the bytes) says the file is text, else
 * `application/octet-stream`, as also without `isText` (a folder listing names its files
 * without reading them).
 */
export const mimeTypeOf = (file: string, isText?: () => boolean): string =>
  TYPES.get(path.extname(file).slice(1).toLowerCase()) ??
  (isText?.() === true ? "text/plain" : "application/octet-stream")
