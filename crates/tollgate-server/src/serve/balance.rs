//! Exact connection balance across the per-core workers.
//!
//! Every worker accepts from a duplicate of one listening socket, so the kernel wakes each
//! worker's epoll for a new connection and whichever thread runs first takes it. On a busy
//! machine that is the same thread again and again: 16 keep-alive connections from the
//! benchmark driver split 15/1, 13/3 and 10/6 over two workers (bench/README.md, 2026-11-30
//! 13:40), and one thread then serves most of the requests while the other idles. As Envoy's
//! `exact_balance` connection balancer does, the worker that accepts a connection hands it to
//! the worker with the fewest open connections when that one has fewer than itself. A hand-off
//! costs one cross-thread wake-up per connection, never per request.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc;

/// Open connections per worker and each worker's inbox for connections handed to it.
#[derive(Debug)]
pub struct Balancer {
    open: Box<[AtomicUsize]>,
    inbox: Box<[mpsc::UnboundedSender<std::net::TcpStream>]>,
}

/// One worker's place in a [`Balancer`]: its index and its inbox.
#[derive(Debug)]
pub struct Seat {
    index: usize,
    balancer: Arc<Balancer>,
    inbox: mpsc::UnboundedReceiver<std::net::TcpStream>,
}

/// Counts one open connection of a worker until dropped (when the connection's task ends).
#[derive(Debug)]
pub struct OpenConnection {
    worker: usize,
    balancer: Arc<Balancer>,
}

impl Balancer {
    /// A balancer for `workers` workers (at least one) and their seats, in worker order.
    pub fn seats(workers: usize) -> Vec<Seat> {
        let workers = workers.max(1);
        let (senders, receivers): (Vec<_>, Vec<_>) =
            (0..workers).map(|_| mpsc::unbounded_channel()).unzip();
        let balancer = Arc::new(Balancer {
            open: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            inbox: senders.into_boxed_slice(),
        });
        receivers
            .into_iter()
            .enumerate()
            .map(|(index, inbox)| Seat {
                index,
                balancer: Arc::clone(&balancer),
                inbox,
            })
            .collect()
    }

    /// The worker that serves a connection accepted by worker `accepted_by`: the one with the
    /// fewest open connections, `accepted_by` itself on a tie. The connection is counted to
    /// that worker at once, so that concurrent accepts see it.
    fn assign(&self, accepted_by: usize) -> usize {
        let mut best = accepted_by;
        let mut fewest = self.open[accepted_by].load(Ordering::Relaxed);
        for (i, open) in self.open.iter().enumerate() {
            let n = open.load(Ordering::Relaxed);
            if n < fewest {
                best = i;
                fewest = n;
            }
        }
        self.open[best].fetch_add(1, Ordering::Relaxed);
        best
    }

    /// Open connections of worker `i` (hand-offs on their way included).
    pub fn open(&self, i: usize) -> usize {
        self.open[i].load(Ordering::Relaxed)
    }
}

impl Seat {
    /// Places a connection this worker accepted: `Some` (with the guard that counts it) when
    /// this worker is to serve it, `None` when it went to the inbox of a worker with fewer open
    /// connections. Errors: the socket cannot be moved off this worker's runtime (it is then
    /// closed).
    pub fn place(
        &self,
        tcp: tokio::net::TcpStream,
    ) -> std::io::Result<Option<(tokio::net::TcpStream, OpenConnection)>> {
        let to = self.balancer.assign(self.index);
        if to == self.index {
            return Ok(Some((tcp, self.guard(to))));
        }
        let counted = self.guard(to);
        match self.balancer.inbox[to].send(tcp.into_std()?) {
            Ok(()) => {
                // The receiving worker counts it from now on.
                std::mem::forget(counted);
                Ok(None)
            }
            // That worker has stopped: serve it here after all.
            Err(mpsc::error::SendError(std)) => {
                drop(counted);
                self.balancer.open[self.index].fetch_add(1, Ordering::Relaxed);
                let tcp = tokio::net::TcpStream::from_std(std)?;
                Ok(Some((tcp, self.guard(self.index))))
            }
        }
    }

    /// The next connection another worker handed to this one, with the guard that counts it
    /// here (the sender counted it already).
    pub async fn handed_off(&mut self) -> (std::net::TcpStream, OpenConnection) {
        loop {
            // The balancer this seat holds keeps every sender, its own included, alive.
            if let Some(tcp) = self.inbox.recv().await {
                return (tcp, self.guard(self.index));
            }
            std::future::pending::<()>().await;
        }
    }

    fn guard(&self, worker: usize) -> OpenConnection {
        OpenConnection {
            worker,
            balancer: Arc::clone(&self.balancer),
        }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.balancer.open[self.worker].fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected loopback pair: (the accepted side as a tokio stream, the client side).
    async fn accepted() -> (tokio::net::TcpStream, tokio::net::TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        (accepted.unwrap().0, client.unwrap())
    }

    #[tokio::test]
    async fn connections_go_to_the_worker_with_the_fewest_open() {
        let mut seats = Balancer::seats(2);
        let balancer = Arc::clone(&seats[0].balancer);
        // Worker 0 accepts everything, as one busy worker does on a loaded machine.
        let (a, _ca) = accepted().await;
        let (_a, kept_a) = seats[0]
            .place(a)
            .unwrap()
            .expect("a tie stays with the acceptor");
        assert_eq!((balancer.open(0), balancer.open(1)), (1, 0));
        let (b, mut cb) = accepted().await;
        assert!(seats[0].place(b).unwrap().is_none(), "worker 1 has fewer");
        assert_eq!((balancer.open(0), balancer.open(1)), (1, 1));
        // Worker 1 receives the very socket: bytes from the client reach it.
        let (std, kept_b) = seats[1].handed_off().await;
        let b = tokio::net::TcpStream::from_std(std).unwrap();
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        cb.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        let mut b = b;
        b.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        // Closing a connection frees its worker's count.
        drop(kept_a);
        assert_eq!((balancer.open(0), balancer.open(1)), (0, 1));
        let (c, _cc) = accepted().await;
        assert!(
            seats[1].place(c).unwrap().is_none(),
            "worker 0 has fewer now"
        );
        let (_, kept_c) = seats[0].handed_off().await;
        drop((kept_b, kept_c));
        assert_eq!((balancer.open(0), balancer.open(1)), (0, 0));
        seats.clear();
    }

    #[tokio::test]
    async fn a_stopped_workers_connections_are_served_by_the_acceptor() {
        let mut seats = Balancer::seats(2);
        let balancer = Arc::clone(&seats[0].balancer);
        let (a, _ca) = accepted().await;
        let (_a, _kept) = seats[0].place(a).unwrap().unwrap();
        // Worker 1 is gone: its inbox is closed.
        seats.truncate(1);
        let (b, _cb) = accepted().await;
        let placed = seats[0].place(b).unwrap();
        assert!(placed.is_some(), "served here after all");
        assert_eq!((balancer.open(0), balancer.open(1)), (2, 0));
    }
}
