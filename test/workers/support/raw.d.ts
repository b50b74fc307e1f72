/** Vite's `?raw` imports: a file's text (the README in the docs test). */
declare module "*?raw" {
  const text: string;
  export default text;
}
