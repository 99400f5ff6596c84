// Package release holds no code: its tests check how avenor is shipped
// from the outside, as a user meets it.
//
//   - install.sh (repository root) installs from an archive whose SHA-256
//     SHA256SUMS lists, refuses a tampered or unlisted one and installs
//     nothing then (TestInstallScript, run by make test on an archive made
//     from the built binaries); it reads the archive once, so a swap after
//     the check installs nothing new (TestInstallScriptReadsArchiveOnce),
//     refuses links, absolute and .. members
//     (TestInstallScriptArchiveMembers) and reads a CRLF SHA256SUMS
//     (TestInstallScriptCRLFSums), on small archives built by the tests;
//   - make install copies the shipped binaries only, not the scripted test
//     plugin (TestMakeInstallShipsOnly);
//   - the archives `make release` writes to dist/ (goreleaser,
//     .goreleaser.yaml): one per linux/darwin × amd64/arm64, each holding
//     exactly the shipped binaries, stripped and for its platform, listed
//     with their SHA-256 in SHA256SUMS; install.sh installs this machine's
//     archive into a temporary prefix, where avenor runs and finds its
//     plugins, and refuses the archive with one byte flipped
//     (TestReleaseArchives, TestReleaseInstall; run by make release, which
//     sets AVENOR_RELEASE_DIST and AVENOR_RELEASE_VERSION).
package release
