//! Who is calling: turns a verified client certificate or a bearer token into an
//! [`Identity`], the way kube-apiserver's x509 and static-token authenticators do.
//!
//! Pure apart from [`TokenFile::load`]: the TLS layer hands in the certificate DER it
//! already verified and the HTTP layer hands in the `Authorization` header; the caller
//! turns errors and `None` into a 401 `Status`.

use protocol::wellknown::{MASTERS_GROUP, MONITORING_GROUP};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

use anyhow::{bail, ensure, Context};

/// Every authenticated identity carries this group, so RBAC bindings can name "anyone
/// who logged in".
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The user name of requests without credentials, where anonymous access is enabled.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group of anonymous requests.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// Tokens are compared one by one in constant time on every request, so the file size
/// bounds per-request work; static token files are hand-written and small.
pub const TOKEN_FILE_ENTRIES_MAX: usize = 10_000;
/// Bounds the memory a token file can take; 10,000 generous lines fit easily.
pub const TOKEN_FILE_BYTES_MAX: u64 = 4 * 1024 * 1024;

/// An authenticated user as authorization and audit see it (kube's `user.Info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The user name (`CN` of a certificate, second column of the token file).
    pub user: String,
    /// A stable ID; empty for certificates, which carry none.
    pub uid: String,
    /// Group names, always including `system:authenticated`.
    pub groups: Vec<String>,
    /// Extra attributes (kube's `user.Info.Extra`), forwarded as `X-Remote-Extra-*`.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Identity {
    /// An identity with `groups` (in order, duplicates dropped) plus
    /// `system:authenticated`, which kube adds to every authenticated user.
    pub fn new(user: impl Into<String>, uid: impl Into<String>, groups: impl IntoIterator<Item = String>) -> Self {
        let mut unique: Vec<String> = Vec::new();
        let authenticated = std::iter::once(AUTHENTICATED_GROUP.to_owned());
        for group in groups.into_iter().chain(authenticated) {
            if !unique.contains(&group) {
                unique.push(group);
            }
        }
        Self { user: user.into(), uid: uid.into(), groups: unique, extra: BTreeMap::new() }
    }

    /// kube's anonymous user: `system:anonymous` in group `system:unauthenticated` only.
    pub fn anonymous() -> Self {
        Self {
            user: ANONYMOUS_USER.to_owned(),
            uid: String::new(),
            groups: vec![UNAUTHENTICATED_GROUP.to_owned()],
            extra: BTreeMap::new(),
        }
    }

    /// Whether authorization should be skipped entirely (group `system:masters`).
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|group| group == MASTERS_GROUP)
    }

    /// Whether the identity may read a server's `/metrics`: `system:masters`, or a scraper
    /// in `system:monitoring`, the group kube's bootstrap policy lets read it.
    pub fn may_read_metrics(&self) -> bool {
        self.is_master() || self.groups.iter().any(|group| group == MONITORING_GROUP)
    }
}

/// Reads the identity from a client certificate the TLS layer has already verified:
/// the CN is the user and every O is a group, as in Kubernetes.
///
/// A certificate without a CN, or with several, is refused rather than guessed at.
pub fn identity_from_certificate(der: &[u8]) -> anyhow::Result<Identity> {
    let (_, cert) =
        x509_parser::parse_x509_certificate(der).map_err(|err| anyhow::anyhow!("parse client certificate: {err}"))?;
    let subject = cert.subject();
    let common_names = subject
        .iter_common_name()
        .map(|cn| cn.as_str())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| anyhow::anyhow!("read client certificate CN: {err}"))?;
    let user = match common_names.as_slice() {
        [user] if !user.is_empty() => *user,
        [] | [_] => bail!("client certificate has no common name to use as user name"),
        _ => bail!("client certificate has several common names"),
    };
    let groups = subject
        .iter_organization()
        .map(|o| o.as_str().map(str::to_owned))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| anyhow::anyhow!("read client certificate O: {err}"))?;
    Ok(Identity::new(user, "", groups))
}

/// kube-apiserver's `--token-auth-file`: CSV lines of `token,user,uid[,"g1,g2"]`.
///
/// Deliberate differences from kube: lines starting with `#` are comments, blank or
/// whitespace-only lines are skipped, a quoted field cannot span lines, a repeated
/// token is an error (kube warns and keeps the last), an empty user name is an error,
/// and empty group names are dropped. An empty token is skipped with a warning, as in
/// kube. Columns are taken verbatim (no whitespace trimming), as in kube.
pub struct TokenFile {
    entries: Vec<TokenEntry>,
}

struct TokenEntry {
    token: String,
    identity: Identity,
}

/// Only the size: the tokens are secrets and must not reach logs.
impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenFile").field("entries", &self.entries.len()).finish()
    }
}

impl TokenFile {
    /// Reads and validates the token file at `path`; errors name the offending line.
    pub fn load(path: &Path) -> anyhow::Result<TokenFile> {
        let file = std::fs::File::open(path).with_context(|| format!("open token file {}", path.display()))?;
        Self::from_reader(file).with_context(|| format!("load token file {}", path.display()))
    }

    /// Parses token-file text from any reader; [`TokenFile::load`] for files.
    ///
    /// Lines are split before CSV parsing so that errors carry exact line numbers
    /// (the csv crate miscounts after comments); the price is that a quoted field
    /// cannot span lines, which no token, user or group name needs.
    pub fn from_reader(reader: impl Read) -> anyhow::Result<TokenFile> {
        let mut text = String::new();
        reader.take(TOKEN_FILE_BYTES_MAX + 1).read_to_string(&mut text).context("read token file")?;
        ensure!(text.len() as u64 <= TOKEN_FILE_BYTES_MAX, "token file is larger than {TOKEN_FILE_BYTES_MAX} bytes");
        let mut entries = Vec::new();
        let mut first_line_of_token: HashMap<String, usize> = HashMap::new();
        for (index, text_line) in text.lines().enumerate() {
            let line = index + 1;
            if text_line.trim().is_empty() || text_line.starts_with('#') {
                continue;
            }
            let record = parse_csv_line(text_line).with_context(|| format!("line {line}"))?;
            let Some(entry) = parse_record(&record, line)? else {
                continue;
            };
            if let Some(first) = first_line_of_token.insert(entry.token.clone(), line) {
                bail!("line {line}: duplicate token (first defined on line {first})");
            }
            ensure!(entries.len() < TOKEN_FILE_ENTRIES_MAX, "line {line}: more than {TOKEN_FILE_ENTRIES_MAX} tokens");
            entries.push(entry);
        }
        Ok(TokenFile { entries })
    }

    /// Number of tokens loaded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the file held no tokens (which makes bearer authentication always fail).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The identity `token` belongs to, if any.
    ///
    /// Every entry is compared in constant time, so response timing tells an attacker
    /// neither how much of a guessed token was right nor which entry was close.
    pub fn authenticate(&self, token: &str) -> Option<Identity> {
        let mut found = None;
        for entry in &self.entries {
            if constant_time_eq(entry.token.as_bytes(), token.as_bytes()) {
                found = Some(&entry.identity);
            }
        }
        found.cloned()
    }
}

/// Parses one CSV line: RFC 4180 quoting as in Go's `encoding/csv`, though stray quotes
/// inside unquoted fields are tolerated where Go would refuse them.
fn parse_csv_line(text_line: &str) -> anyhow::Result<csv::StringRecord> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text_line.as_bytes());
    let mut record = csv::StringRecord::new();
    let found = reader.read_record(&mut record).context("parse CSV")?;
    ensure!(found, "no CSV record");
    Ok(record)
}

/// One CSV record; `Ok(None)` for records kube skips (empty token).
fn parse_record(record: &csv::StringRecord, line: usize) -> anyhow::Result<Option<TokenEntry>> {
    ensure!(
        record.len() >= 3,
        "line {line}: token file must have at least 3 columns (token, user name, user uid), \
         found {}",
        record.len()
    );
    let (token, user, uid) = (&record[0], &record[1], &record[2]);
    if token.is_empty() {
        tracing::warn!(line, "skipping empty token in token file");
        return Ok(None);
    }
    ensure!(!user.is_empty(), "line {line}: user name is empty");
    let groups = record.get(3).unwrap_or("").split(',').filter(|group| !group.is_empty()).map(str::to_owned);
    Ok(Some(TokenEntry { token: token.to_owned(), identity: Identity::new(user, uid, groups) }))
}

/// Leaks only whether the lengths differ, which a token's length reveals little about.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // Keeps the optimiser from turning the fold into an early-exit comparison.
    std::hint::black_box(difference) == 0
}

/// Why a request's credentials were rejected; each maps to a 401 `Status`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthnError {
    /// `Authorization: Bearer` carried a token that is empty, malformed or unknown, or
    /// no token file is configured.
    #[error("invalid bearer token")]
    InvalidBearerToken,
    /// A client certificate passed TLS verification but names no usable user.
    #[error("invalid client certificate: {reason}")]
    InvalidClientCertificate {
        /// What was wrong with it, for the person reading the 401 message.
        reason: String,
    },
    /// A front-proxy's identity headers were missing or malformed.
    #[error("invalid identity headers from the front-proxy: {reason}")]
    InvalidIdentityHeaders {
        /// What was wrong with them.
        reason: String,
    },
}

/// What a client certificate that passed TLS verification says about the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertificateCaller {
    /// Signed by the client CA: the certificate names the user (CN) and groups (O).
    User(Identity),
    /// Signed by the front-proxy CA: the caller is a front-proxy (`user` is its CN), which
    /// names the user of each request in identity headers ([`identity_from_headers`]).
    FrontProxy {
        /// The front-proxy's own name, for logs.
        user: String,
    },
}

/// Combines the request authenticators in kube's order of precedence.
#[derive(Debug)]
pub struct Authenticator {
    tokens: Option<TokenFile>,
    /// The front-proxy CA bundle (DER, every certificate, so that a rotated CA keeps
    /// working); empty trusts no front-proxy.
    front_proxy_cas: Vec<Vec<u8>>,
    /// The CNs a front-proxy certificate may carry (kube's `--requestheader-allowed-names`);
    /// empty accepts any certificate of the bundle, as kube does.
    front_proxy_names: Vec<String>,
}

impl Authenticator {
    /// Bearer tokens are accepted only when a token file is given, identity headers only
    /// from certificates signed by a CA of the `front_proxy_ca_pem` bundle.
    pub fn new(tokens: Option<TokenFile>, front_proxy_ca_pem: Option<&str>) -> anyhow::Result<Self> {
        let mut front_proxy_cas = Vec::new();
        if let Some(pem) = front_proxy_ca_pem {
            for block in x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes()) {
                let block = block.map_err(|err| anyhow::anyhow!("parse the front-proxy CA bundle: {err}"))?;
                x509_parser::parse_x509_certificate(&block.contents)
                    .map_err(|err| anyhow::anyhow!("parse the front-proxy CA bundle: {err}"))?;
                front_proxy_cas.push(block.contents);
            }
            anyhow::ensure!(!front_proxy_cas.is_empty(), "the front-proxy CA bundle holds no certificate");
        }
        Ok(Self { tokens, front_proxy_cas, front_proxy_names: Vec::new() })
    }

    /// Accepts front-proxy certificates only with one of these common names (kube's
    /// `--requestheader-allowed-names`); blank names are dropped, and no names at all keep
    /// accepting every certificate of the front-proxy CA. Another certificate of that CA
    /// is refused outright (401), not taken for a user: the client CA did not sign it.
    pub fn with_front_proxy_names(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.front_proxy_names =
            names.into_iter().map(|name| name.trim().to_owned()).filter(|n| !n.is_empty()).collect();
        self
    }

    /// Classifies a client certificate rustls has already verified against the client CA
    /// or the front-proxy CA: a signature by a front-proxy CA makes it a front-proxy,
    /// anything else is a user certificate.
    pub fn certificate_caller(&self, der: &[u8]) -> Result<CertificateCaller, AuthnError> {
        let invalid = |reason: String| AuthnError::InvalidClientCertificate { reason };
        if !self.front_proxy_cas.is_empty() {
            let (_, cert) = x509_parser::parse_x509_certificate(der).map_err(|err| invalid(format!("parse: {err}")))?;
            for ca_der in &self.front_proxy_cas {
                let (_, ca) = x509_parser::parse_x509_certificate(ca_der).map_err(|err| invalid(format!("{err}")))?;
                if cert.issuer().as_raw() == ca.subject().as_raw()
                    && cert.verify_signature(Some(ca.public_key())).is_ok()
                {
                    let user = identity_from_certificate(der).map_err(|err| invalid(format!("{err:#}")))?.user;
                    if !self.front_proxy_names.is_empty() && !self.front_proxy_names.contains(&user) {
                        return Err(invalid(format!(
                            "front-proxy certificate {user:?} is not one of the names this server accepts identity \
                             headers from (--requestheader-allowed-names)"
                        )));
                    }
                    return Ok(CertificateCaller::FrontProxy { user });
                }
            }
        }
        identity_from_certificate(der).map(CertificateCaller::User).map_err(|err| invalid(format!("{err:#}")))
    }

    /// Identifies the caller of one request.
    ///
    /// A client certificate wins (rustls verified it against the client CA already);
    /// otherwise `Authorization: Bearer <token>` is looked up. Other schemes (e.g.
    /// `Basic`) are ignored as kube ignores them. `Ok(None)` means no credentials at
    /// all; the caller decides whether the path needs any.
    pub fn authenticate(
        &self,
        peer_cert_der: Option<&[u8]>,
        authorization_header: Option<&str>,
    ) -> Result<Option<Identity>, AuthnError> {
        if let Some(der) = peer_cert_der {
            return identity_from_certificate(der)
                .map(Some)
                .map_err(|err| AuthnError::InvalidClientCertificate { reason: format!("{err:#}") });
        }
        let Some(token) = authorization_header.and_then(bearer_token) else {
            return Ok(None);
        };
        let token = token?;
        self.tokens
            .as_ref()
            .and_then(|tokens| tokens.authenticate(token))
            .map(Some)
            .ok_or(AuthnError::InvalidBearerToken)
    }
}

/// The token of a `Bearer` header; `None` when the header uses another scheme.
fn bearer_token(header: &str) -> Option<Result<&str, AuthnError>> {
    let header = header.trim();
    let (scheme, token) = header.split_once(|c: char| c.is_ascii_whitespace()).unwrap_or((header, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    if token.is_empty() || token.contains(|c: char| c.is_ascii_whitespace()) {
        return Some(Err(AuthnError::InvalidBearerToken));
    }
    Some(Ok(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki;

    fn groups(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    fn parse(text: &str) -> anyhow::Result<TokenFile> {
        TokenFile::from_reader(text.as_bytes())
    }

    /// `/metrics` is for `system:masters` and kube's scraper group, not for any other user,
    /// whatever else they are in, nor for anonymous callers.
    #[test]
    fn only_masters_and_the_monitoring_group_read_metrics() {
        let cases: [(&[&str], bool); 5] = [
            (&["system:masters"], true),
            (&["system:monitoring"], true),
            (&["dev", "system:monitoring"], true),
            (&["dev", "system:serviceaccounts"], false),
            (&[], false),
        ];
        for (member_of, may) in cases {
            assert_eq!(Identity::new("scraper", "", groups(member_of)).may_read_metrics(), may, "{member_of:?}");
        }
        assert!(!Identity::anonymous().may_read_metrics());
    }

    #[test]
    fn token_file_parsing_table() {
        struct Case {
            name: &'static str,
            text: &'static str,
            token: &'static str,
            want: Option<(&'static str, &'static str, &'static [&'static str])>,
        }
        let cases = [
            Case {
                name: "three columns",
                text: "t1,alice,u1\n",
                token: "t1",
                want: Some(("alice", "u1", &["system:authenticated"])),
            },
            Case {
                name: "one unquoted group",
                text: "t1,alice,u1,dev\n",
                token: "t1",
                want: Some(("alice", "u1", &["dev", "system:authenticated"])),
            },
            Case {
                name: "quoted groups",
                text: "t1,alice,u1,\"dev,system:masters\"\n",
                token: "t1",
                want: Some(("alice", "u1", &["dev", "system:masters", "system:authenticated"])),
            },
            Case {
                name: "empty groups column and empty group names",
                text: "t1,alice,u1,\",dev,,\"\nt2,bob,u2,\n",
                token: "t2",
                want: Some(("bob", "u2", &["system:authenticated"])),
            },
            Case {
                name: "extra columns are ignored",
                text: "t1,alice,u1,dev,ignored\n",
                token: "t1",
                want: Some(("alice", "u1", &["dev", "system:authenticated"])),
            },
            Case {
                name: "comments, blank lines and CRLF",
                text: "# token,user,uid\r\n\r\n  \nt1,alice,u1\r\n#t2,bob,u2\r\n",
                token: "t1",
                want: Some(("alice", "u1", &["system:authenticated"])),
            },
            Case {
                name: "commented-out token is not accepted",
                text: "#t2,bob,u2\nt1,alice,u1\n",
                token: "#t2",
                want: None,
            },
            Case { name: "empty token is skipped", text: ",nobody,u0\nt1,alice,u1\n", token: "", want: None },
            Case {
                name: "quoted token with comma",
                text: "\"t,1\",alice,u1\n",
                token: "t,1",
                want: Some(("alice", "u1", &["system:authenticated"])),
            },
            Case {
                name: "prefix of a token is not the token",
                text: "secret-token,alice,u1\n",
                token: "secret",
                want: None,
            },
            Case {
                name: "system:authenticated is not duplicated",
                text: "t1,alice,u1,system:authenticated\n",
                token: "t1",
                want: Some(("alice", "u1", &["system:authenticated"])),
            },
        ];
        for case in cases {
            let file = parse(case.text).unwrap_or_else(|err| panic!("{}: {err:#}", case.name));
            let got = file.authenticate(case.token);
            let want = case.want.map(|(user, uid, want_groups)| Identity {
                user: user.to_owned(),
                uid: uid.to_owned(),
                groups: groups(want_groups),
                extra: BTreeMap::new(),
            });
            assert_eq!(got, want, "{}", case.name);
        }
    }

    #[test]
    fn token_file_errors_name_the_line() {
        let cases = [
            ("t1,alice\n", "line 1: token file must have at least 3 columns"),
            ("# header\n\nt1,alice,u1\nt2\n", "line 4: token file must have at least 3"),
            ("t1,alice,u1\nt2,bob,u2\nt1,carol,u3\n", "line 3: duplicate token (first defined on line 1)"),
            ("t1,,u1\n", "line 1: user name is empty"),
        ];
        for (text, want) in cases {
            let err = parse(text).expect_err(text);
            let message = format!("{err:#}");
            assert!(message.contains(want), "{text:?}: got {message:?}, want {want:?}");
        }
    }

    #[test]
    fn token_file_load_reports_missing_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tokens.csv");
        let err = TokenFile::load(&path).expect_err("missing");
        assert!(format!("{err:#}").contains("open token file"));
        std::fs::write(&path, "t1,alice,u1,\"a,b\"\n").expect("write");
        let file = TokenFile::load(&path).expect("load");
        assert_eq!(file.len(), 1);
        assert!(!format!("{file:?}").contains("t1"));
    }

    #[test]
    fn certificate_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let material = pki::load_or_create(dir.path(), &[]).expect("pki");
        let cases: [(&str, &[&str]); 3] =
            [("alice", &[]), ("bob", &["dev"]), ("system:node:n1", &["system:nodes", "ops", "dev"])];
        for (user, want_groups) in cases {
            let (cert_pem, _) =
                pki::issue_client_cert(&dir.path().join("pki"), user, &groups(want_groups)).expect("issue");
            let identity = identity_from_certificate(&pem_der(&cert_pem)).expect("identity");
            let mut expected = groups(want_groups);
            expected.push(AUTHENTICATED_GROUP.to_owned());
            assert_eq!(identity, Identity::new(user, "", expected), "{user}");
            assert!(!identity.is_master());
        }
        let admin = identity_from_certificate(&pem_der(&material.admin_cert_pem)).expect("admin");
        assert_eq!(admin.user, "admin");
        assert!(admin.is_master());
        assert!(identity_from_certificate(b"not a certificate").is_err());
    }

    fn pem_der(pem: &str) -> Vec<u8> {
        let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("pem");
        block.contents
    }

    #[test]
    fn front_proxy_certificates_are_recognised_by_any_ca_of_the_bundle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let other = tempfile::tempdir().expect("tempdir");
        let shard = pki::load_or_create(dir.path(), &[]).expect("pki");
        let foreign = pki::load_or_create(other.path(), &[]).expect("pki");
        let options = pki::PkiOptions {
            pki_dir: dir.path().join("pki"),
            leaf_dir: dir.path().join("proxy"),
            process_name: "fp".into(),
            hosts: Vec::new(),
            files: pki::CertFiles::default(),
            role: pki::Role::FrontProxy,
        };
        let proxy = pki::load(&options).expect("front-proxy pki");
        let bundle = format!(
            "{}{}",
            foreign.front_proxy_ca_cert_pem.as_deref().expect("ca"),
            shard.front_proxy_ca_cert_pem.as_deref().expect("ca")
        );
        let authenticator = Authenticator::new(None, Some(&bundle)).expect("authenticator");
        let caller = authenticator.certificate_caller(&pem_der(&proxy.peer_client_cert_pem)).expect("caller");
        assert_eq!(caller, CertificateCaller::FrontProxy { user: pki::front_proxy_user("fp") });
        let user = authenticator.certificate_caller(&pem_der(&shard.admin_cert_pem)).expect("caller");
        assert!(matches!(user, CertificateCaller::User(identity) if identity.user == "admin"));
        // With allowed names, only a certificate carrying one of them is a front-proxy.
        let named = Authenticator::new(None, Some(&bundle))
            .expect("authenticator")
            .with_front_proxy_names([" ".to_owned(), pki::front_proxy_user("fp")]);
        let caller = named.certificate_caller(&pem_der(&proxy.peer_client_cert_pem)).expect("allowed name");
        assert_eq!(caller, CertificateCaller::FrontProxy { user: pki::front_proxy_user("fp") });
        let other = Authenticator::new(None, Some(&bundle))
            .expect("authenticator")
            .with_front_proxy_names(["system:atoll:front-proxy:other".to_owned()]);
        let refused = other.certificate_caller(&pem_der(&proxy.peer_client_cert_pem)).expect_err("name not allowed");
        assert!(
            matches!(&refused, AuthnError::InvalidClientCertificate { reason } if reason.contains("--requestheader-allowed-names")),
            "{refused:?}"
        );
        let user = other.certificate_caller(&pem_der(&shard.admin_cert_pem)).expect("user certificates are unaffected");
        assert!(matches!(user, CertificateCaller::User(identity) if identity.user == "admin"));
        // Without the bundle, the proxy's certificate is nobody special.
        let plain = Authenticator::new(None, None).expect("authenticator");
        let caller = plain.certificate_caller(&pem_der(&proxy.peer_client_cert_pem)).expect("caller");
        assert!(matches!(caller, CertificateCaller::User(_)));
        assert!(Authenticator::new(None, Some("not pem")).is_err());
    }

    #[test]
    fn authenticator_precedence_table() {
        let dir = tempfile::tempdir().expect("tempdir");
        let material = pki::load_or_create(dir.path(), &[]).expect("pki");
        let admin_der = pem_der(&material.admin_cert_pem);
        let tokens = parse("t1,alice,u1,dev\n").expect("tokens");
        let with_tokens = Authenticator::new(Some(tokens), None).expect("authenticator");
        let without_tokens = Authenticator::new(None, None).expect("authenticator");

        // (uses token file, presents admin certificate, Authorization header, expected
        // user and whether it is a master, or the error).
        type Expected = Result<Option<(&'static str, bool)>, AuthnError>;
        let alice: Expected = Ok(Some(("alice", false)));
        let admin: Expected = Ok(Some(("admin", true)));
        let invalid: Expected = Err(AuthnError::InvalidBearerToken);
        let cases = [
            (true, false, None, Ok(None)),
            (true, false, Some("Bearer t1"), alice.clone()),
            (true, false, Some("bearer   t1 "), alice.clone()),
            (true, false, Some("Bearer t2"), invalid.clone()),
            (true, false, Some("Bearer"), invalid.clone()),
            (true, false, Some("Bearer t1 t1"), invalid.clone()),
            (true, false, Some("Basic dDE6"), Ok(None)),
            (true, true, Some("Bearer t1"), admin.clone()),
            (true, true, Some("Bearer wrong"), admin.clone()),
            (false, false, Some("Bearer t1"), invalid.clone()),
            (false, true, None, admin.clone()),
        ];
        for (uses_tokens, presents_cert, header, want) in cases {
            let authenticator = if uses_tokens { &with_tokens } else { &without_tokens };
            let cert = presents_cert.then_some(admin_der.as_slice());
            let got = authenticator
                .authenticate(cert, header)
                .map(|identity| identity.map(|i| (i.user.clone(), i.is_master())));
            let want = want.map(|identity| identity.map(|(user, master)| (user.to_owned(), master)));
            assert_eq!(got, want, "tokens={uses_tokens} cert={presents_cert} {header:?}");
        }

        let err = with_tokens.authenticate(Some(b"garbage"), None).expect_err("garbage certificate");
        assert!(matches!(err, AuthnError::InvalidClientCertificate { .. }));
    }
}
