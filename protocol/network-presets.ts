/**
 * Named lists of hosts a project's network policy may allow at once (`network.presets`). One
 * file, so what a preset opens is read in one place (and listed by a test, and by `project
 * options`). A name is a host, or `*.` and a domain for its subdomains only; no port: any port.
 */
export const NETWORK_PRESETS = {
  "package-registries": {
    description:
      "Public package registries and code downloads: npm (and Yarn), PyPI, crates.io, the Go module proxy, " +
      "RubyGems, Maven Central, the Debian and Ubuntu archives, and GitHub's and GitLab's code downloads.",
    hosts: [
      // npm, Yarn (classic mirrors npm; Berry's own releases), and what corepack fetches
      "registry.npmjs.org",
      "registry.yarnpkg.com",
      "repo.yarnpkg.com",
      // PyPI: the index and the files it points at
      "pypi.org",
      "files.pythonhosted.org",
      // crates.io: the API, the sparse index and the crate files
      "crates.io",
      "index.crates.io",
      "static.crates.io",
      // the Go module proxy and its checksum database
      "proxy.golang.org",
      "sum.golang.org",
      // RubyGems
      "rubygems.org",
      "index.rubygems.org",
      // Maven Central
      "repo.maven.apache.org",
      "repo1.maven.org",
      // Debian and Ubuntu archives (apt)
      "deb.debian.org",
      "security.debian.org",
      "archive.ubuntu.com",
      "security.ubuntu.com",
      "ports.ubuntu.com",
      // code downloads (tarballs, release assets, raw files, git over https)
      "github.com",
      "codeload.github.com",
      "objects.githubusercontent.com",
      "raw.githubusercontent.com",
      "gitlab.com",
    ],
  },
} as const satisfies Record<string, { description: string; hosts: readonly string[] }>;

export type NetworkPresetName = keyof typeof NETWORK_PRESETS;
export const NETWORK_PRESET_NAMES = Object.keys(NETWORK_PRESETS) as [
  NetworkPresetName,
  ...NetworkPresetName[],
];
