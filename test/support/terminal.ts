/** For tests of text output: the characters a terminal would act on, found in `text` (line breaks aside). */
export const rawControls = (text: string): Array<string> =>
  [...text].filter((char) => {
    const code = char.codePointAt(0) ?? 0
    return (
      (code < 0x20 && char !== "\n") ||
      (code >= 0x7f && code <= 0x9f) ||
      (code >= 0x2028 && code <= 0x202e) ||
      (code >= 0x2066 && code <= 0x2069)
    )
  })
