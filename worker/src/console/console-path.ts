/** Where the console lives; the shared sign-in form may send a person back here. */
export const CONSOLE_PATH = "/";
