//! Users of a test's cluster: client certificates signed by the server's own CA (from its
//! data dir, as an administrator with the CA key would make them), and kubeconfigs that use
//! them, for tests that act as someone other than `system:masters`.

use std::path::PathBuf;

use openssl::pkey::{PKey, Private};
use openssl::x509::X509;

use crate::cluster::RkubeServer;

/// A client certificate and its key.
pub struct Identity {
    pub cert: X509,
    pub key: PKey<Private>,
}

impl Identity {
    /// The certificate of `name` in the server's PKI directory (`admin`, ...).
    pub fn from_pki(s: &RkubeServer, name: &str) -> Identity {
        let pki = s.data_dir.path().join("pki");
        let read = |ext: &str| std::fs::read(pki.join(format!("{name}.{ext}"))).expect("pki file");
        Identity {
            cert: X509::from_pem(&read("crt")).expect("certificate"),
            key: PKey::private_key_from_pem(&read("key")).expect("key"),
        }
    }

    /// A day-long client certificate for user `cn` in `groups`, signed by the cluster CA.
    pub fn issue(s: &RkubeServer, cn: &str, groups: &[&str]) -> Identity {
        use openssl::asn1::Asn1Time;
        use openssl::bn::{BigNum, MsbOption};
        use openssl::ec::{EcGroup, EcKey};
        use openssl::hash::MessageDigest;
        use openssl::nid::Nid;
        use openssl::x509::extension::ExtendedKeyUsage;
        use openssl::x509::X509NameBuilder;
        let ca = Identity::from_pki(s, "ca");
        let key = PKey::from_ec_key(
            EcKey::generate(&EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap()).unwrap(),
        )
        .unwrap();
        let mut name = X509NameBuilder::new().unwrap();
        for group in groups {
            name.append_entry_by_nid(Nid::ORGANIZATIONNAME, group).unwrap();
        }
        name.append_entry_by_nid(Nid::COMMONNAME, cn).unwrap();
        let name = name.build();
        let mut builder = X509::builder().unwrap();
        builder.set_version(2).unwrap();
        let mut serial = BigNum::new().unwrap();
        serial.rand(64, MsbOption::MAYBE_ZERO, false).unwrap();
        builder.set_serial_number(&serial.to_asn1_integer().unwrap()).unwrap();
        builder.set_subject_name(&name).unwrap();
        builder.set_issuer_name(ca.cert.subject_name()).unwrap();
        builder.set_pubkey(&key).unwrap();
        builder.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
        builder.set_not_after(&Asn1Time::days_from_now(1).unwrap()).unwrap();
        builder.append_extension(ExtendedKeyUsage::new().client_auth().build().unwrap()).unwrap();
        builder.sign(&ca.key, MessageDigest::sha256()).unwrap();
        Identity { cert: builder.build(), key }
    }

    /// Writes the certificate and key into the server's data dir as `<file>.crt` and
    /// `<file>.key`; returns their paths.
    pub fn write(&self, s: &RkubeServer, file: &str) -> (PathBuf, PathBuf) {
        let dir = s.data_dir.path();
        let (cert, key) = (dir.join(format!("{file}.crt")), dir.join(format!("{file}.key")));
        std::fs::write(&cert, self.cert.to_pem().unwrap()).unwrap();
        std::fs::write(&key, self.key.private_key_to_pem_pkcs8().unwrap()).unwrap();
        (cert, key)
    }

    /// A kubeconfig with this identity in place of the admin's (named `<file>.kubeconfig`
    /// in the data dir).
    pub fn kubeconfig(&self, s: &RkubeServer, file: &str) -> PathBuf {
        let (cert, key) = self.write(s, file);
        let kubeconfig = s.data_dir.path().join(format!("{file}.kubeconfig"));
        std::fs::copy(&s.kubeconfig, &kubeconfig).unwrap();
        let config = |args: &[&str]| {
            let out = std::process::Command::new(&s.kubectl)
                .env("KUBECONFIG", &kubeconfig)
                .arg("config")
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        };
        config(&[
            "set-credentials",
            file,
            &format!("--client-certificate={}", cert.display()),
            &format!("--client-key={}", key.display()),
            "--embed-certs",
        ]);
        config(&["set-context", "--current", &format!("--user={file}")]);
        kubeconfig
    }
}

/// A kubeconfig (`<name>.kubeconfig` in the data dir) that reaches the server with this
/// bearer token and nothing else (no client certificate, which would authenticate first).
pub fn token_kubeconfig(s: &RkubeServer, name: &str, token: &str) -> PathBuf {
    let ca = s.data_dir.path().join("pki/ca.crt");
    assert!(ca.exists(), "no CA at {}", ca.display());
    let path = s.data_dir.path().join(format!("{name}.kubeconfig"));
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: {}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
        s.port,
        ca.display(),
        token.trim()
    );
    std::fs::write(&path, config).unwrap();
    path
}

/// base64url without padding, decoded.
pub fn base64url(text: &str) -> Vec<u8> {
    let mut standard: String = text
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    while !standard.len().is_multiple_of(4) {
        standard.push('=');
    }
    openssl::base64::decode_block(&standard).expect("base64url")
}

/// Makes the service account `default/<name>` and returns a kubeconfig with a token of its
/// (from `kubectl create token`) and nothing else.
pub fn service_account_kubeconfig(s: &RkubeServer, name: &str) -> PathBuf {
    s.ok(&["create", "serviceaccount", name]);
    let token = s.ok(&["create", "token", name]);
    token_kubeconfig(s, name, &token)
}

/// One part of a JWT (0: header, 1: claims), decoded from base64url without padding.
pub fn jwt_part(token: &str, index: usize) -> serde_json::Value {
    let parts: Vec<&str> = token.trim().split('.').collect();
    assert_eq!(parts.len(), 3, "not a JWT: {token}");
    let bytes = base64url(parts[index]);
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {token}"))
}
