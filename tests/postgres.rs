//! The PostgreSQL engine on a real server holding the Defog databases (loaded once per run).

use sqlgate::exec::postgres::Server;
use sqlgate::exec::{Backend, Engine, Limits};
use sqlgate::testing::postgres::defog_server;

#[test]
fn server_starts_and_answers() {
    let Some(pg) = defog_server() else { return };
    let server = Server::new(&pg.reader_template(), None).unwrap();
    let engine = Engine::with_backend(Limits::default(), Backend::Postgres(server.clone()));
    let run = engine.execute(std::path::Path::new("academic"), "SELECT count(*) AS n, 1.5::numeric AS x FROM author");
    println!("{:?}", run.result);
    println!("{:?}", server.check_reader("academic"));
    println!("{}", server.schema("academic").unwrap().ddl());
}
