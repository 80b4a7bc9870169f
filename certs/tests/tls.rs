//! The PKI in use: real mutual-TLS handshakes over loopback with `openssl::ssl`, the way the
//! API server (acceptor) and kubectl or a kubelet (connector) will use the material.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use openssl::nid::Nid;
use openssl::pkey::PKey;
use openssl::ssl::{SslAcceptor, SslConnector, SslMethod, SslVerifyMode};
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::X509;
use rkube_certs::{CertKeyPair, Pki, PkiOptions};

const TIMEOUT: Duration = Duration::from_secs(10);

fn pki(dir: &tempfile::TempDir) -> Pki {
    Pki::load_or_create(&PkiOptions::new(dir.path().join("pki"))).unwrap()
}

fn store_with(ca_pem: &str) -> openssl::x509::store::X509Store {
    let mut store = X509StoreBuilder::new().unwrap();
    store.add_cert(X509::from_pem(ca_pem.as_bytes()).unwrap()).unwrap();
    store.build()
}

/// The API server's side: its serving certificate, client certificates required and verified
/// against the cluster CA.
fn acceptor(pki: &Pki) -> SslAcceptor {
    let mut b = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls()).unwrap();
    b.set_certificate(&X509::from_pem(pki.apiserver().cert_pem.as_bytes()).unwrap()).unwrap();
    b.set_private_key(&PKey::private_key_from_pem(pki.apiserver().key_pem.as_bytes()).unwrap())
        .unwrap();
    b.check_private_key().unwrap();
    b.set_verify_cert_store(store_with(pki.ca_cert_pem())).unwrap();
    b.add_client_ca(&X509::from_pem(pki.ca_cert_pem().as_bytes()).unwrap()).unwrap();
    b.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
    b.build()
}

/// A client trusting only `ca_pem`, presenting `client` if given.
fn connector(ca_pem: &str, client: Option<&CertKeyPair>) -> SslConnector {
    let mut b = SslConnector::builder(SslMethod::tls()).unwrap();
    b.set_verify_cert_store(store_with(ca_pem)).unwrap();
    if let Some(c) = client {
        b.set_certificate(&X509::from_pem(c.cert_pem.as_bytes()).unwrap()).unwrap();
        b.set_private_key(&PKey::private_key_from_pem(c.key_pem.as_bytes()).unwrap()).unwrap();
    }
    b.build()
}

/// The client's CN and Os as the server saw them.
type Seen = (Vec<String>, Vec<String>);

/// One connection over loopback: the server's view (peer CN/O) and what the client read.
/// `server_name` is only what the client verifies the certificate against; traffic always goes
/// to 127.0.0.1.
fn handshake(
    server: &Pki,
    client: &SslConnector,
    server_name: &str,
) -> (Result<Seen, String>, Result<String, String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = acceptor(server);
    let server = thread::spawn(move || -> Result<Seen, String> {
        let (tcp, _) = listener.accept().map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(TIMEOUT)).unwrap();
        tcp.set_write_timeout(Some(TIMEOUT)).unwrap();
        let mut tls = acceptor.accept(tcp).map_err(|e| e.to_string())?;
        let peer = tls.ssl().peer_certificate().ok_or("no client certificate")?;
        let entries = |nid| -> Vec<String> {
            peer.subject_name().entries_by_nid(nid).map(|e| e.data().to_string().unwrap()).collect()
        };
        let seen = (entries(Nid::COMMONNAME), entries(Nid::ORGANIZATIONNAME));
        tls.write_all(format!("hello {}\n", seen.0.join(",")).as_bytes())
            .map_err(|e| e.to_string())?;
        let _ = tls.shutdown();
        Ok(seen)
    });
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(TIMEOUT)).unwrap();
    tcp.set_write_timeout(Some(TIMEOUT)).unwrap();
    let client = match client.connect(server_name, tcp) {
        Ok(mut tls) => {
            // With TLS 1.3 the server judges the client certificate after the client's side of
            // the handshake is done: a rejection shows up on the first read.
            let mut reply = String::new();
            tls.read_to_string(&mut reply).map(|_| reply).map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    };
    (server.join().unwrap(), client)
}

#[test]
fn admin_client_and_api_server_authenticate_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(&dir);
    let admin = connector(pki.ca_cert_pem(), Some(pki.admin()));
    for name in ["localhost", "127.0.0.1", "::1", "kubernetes.default.svc", "10.43.0.1"] {
        let (server, client) = handshake(&pki, &admin, name);
        let seen = server.unwrap_or_else(|e| panic!("{name}: server: {e}"));
        assert_eq!(seen, (vec!["system:admin".to_owned()], vec!["system:masters".to_owned()]));
        assert_eq!(
            client.unwrap_or_else(|e| panic!("{name}: client: {e}")),
            "hello system:admin\n"
        );
    }

    let kubelet_client = connector(pki.ca_cert_pem(), Some(pki.kubelet_client()));
    let (server, _) = handshake(&pki, &kubelet_client, "localhost");
    assert_eq!(
        server.unwrap(),
        (vec!["kube-apiserver-kubelet-client".to_owned()], Vec::<String>::new())
    );

    let node = pki.issue_client_cert("system:node:n1", &["system:nodes"], 1).unwrap();
    let (server, client) = handshake(&pki, &connector(pki.ca_cert_pem(), Some(&node)), "localhost");
    assert_eq!(
        server.unwrap(),
        (vec!["system:node:n1".to_owned()], vec!["system:nodes".to_owned()])
    );
    assert_eq!(client.unwrap(), "hello system:node:n1\n");
}

#[test]
fn client_verifies_the_server_name() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(&dir);
    let admin = connector(pki.ca_cert_pem(), Some(pki.admin()));
    for name in ["example.com", "10.0.0.1"] {
        let (server, client) = handshake(&pki, &admin, name);
        let err = client.expect_err(name);
        assert!(err.contains("certificate verify failed"), "{name}: {err}");
        assert!(server.is_err(), "{name}");
    }
}

#[test]
fn client_certificate_from_another_ca_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let pki = pki(&dir);
    let other = self::pki(&other_dir);
    assert_ne!(pki.ca_cert_pem(), other.ca_cert_pem());

    // Trusts our server, but presents the other cluster's admin certificate.
    let stranger = connector(pki.ca_cert_pem(), Some(other.admin()));
    let (server, client) = handshake(&pki, &stranger, "localhost");
    let err = server.expect_err("server must reject a foreign client certificate");
    assert!(err.contains("certificate verify failed"), "{err}");
    assert!(client.is_err(), "client must not get a reply: {client:?}");

    // No client certificate at all.
    let anonymous = connector(pki.ca_cert_pem(), None);
    let (server, client) = handshake(&pki, &anonymous, "localhost");
    assert!(server.is_err());
    assert!(client.is_err(), "{client:?}");

    // A client trusting only the other CA refuses our server.
    let misconfigured = connector(other.ca_cert_pem(), Some(other.admin()));
    let (server, client) = handshake(&pki, &misconfigured, "localhost");
    assert!(client.unwrap_err().contains("certificate verify failed"));
    assert!(server.is_err());
}
