-- Bookshop demo database: a small publishing and retail business.
--
-- Relationships:
--   publishers 1-n books
--   books n-m authors, through the link table book_authors
--   cities 1-n stores and cities 1-n customers (cities is reachable two ways)
--   customers 1-n orders, stores 1-n orders (an order with no store was placed online)
--   orders 1-n order_items n-1 books
--
-- Dates are ISO-8601 TEXT ('YYYY-MM-DD'); prices are REAL amounts in dollars.

-- Cities where customers live and where stores are located.
CREATE TABLE cities (
    city_id  INTEGER PRIMARY KEY,
    name     TEXT NOT NULL,
    country  TEXT NOT NULL,
    UNIQUE (name, country)
);

-- Publishing houses; founded_year is unknown (NULL) for some.
CREATE TABLE publishers (
    publisher_id  INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    country       TEXT NOT NULL,
    founded_year  INTEGER CHECK (founded_year BETWEEN 1400 AND 2100)
);

-- Writers; birth_year and country are NULL when unknown.
CREATE TABLE authors (
    author_id   INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    birth_year  INTEGER,
    country     TEXT
);

-- The catalogue: one row per edition sold. pages is NULL when not recorded.
CREATE TABLE books (
    book_id         INTEGER PRIMARY KEY,
    title           TEXT NOT NULL,
    isbn            TEXT NOT NULL UNIQUE,
    publisher_id    INTEGER NOT NULL REFERENCES publishers (publisher_id),
    genre           TEXT NOT NULL CHECK (genre IN ('Fiction', 'Mystery', 'Science Fiction', 'Fantasy',
                        'History', 'Biography', 'Science', 'Children', 'Poetry', 'Cookery')),
    published_date  TEXT NOT NULL,
    price           REAL NOT NULL CHECK (price > 0),
    pages           INTEGER CHECK (pages > 0)
);

-- Link table between books and authors (many-to-many); author_position 1 is the lead author.
CREATE TABLE book_authors (
    book_id          INTEGER NOT NULL REFERENCES books (book_id),
    author_id        INTEGER NOT NULL REFERENCES authors (author_id),
    author_position  INTEGER NOT NULL CHECK (author_position >= 1),
    PRIMARY KEY (book_id, author_id)
);

-- The shop's physical stores.
CREATE TABLE stores (
    store_id     INTEGER PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    city_id      INTEGER NOT NULL REFERENCES cities (city_id),
    opened_date  TEXT NOT NULL
);

-- Registered customers; email and city_id may be NULL when the customer did not give them.
CREATE TABLE customers (
    customer_id   INTEGER PRIMARY KEY,
    first_name    TEXT NOT NULL,
    last_name     TEXT NOT NULL,
    email         TEXT UNIQUE,
    city_id       INTEGER REFERENCES cities (city_id),
    joined_date   TEXT NOT NULL,
    loyalty_tier  TEXT NOT NULL DEFAULT 'none' CHECK (loyalty_tier IN ('none', 'silver', 'gold'))
);

-- Customer orders; store_id is NULL for orders placed online.
CREATE TABLE orders (
    order_id     INTEGER PRIMARY KEY,
    customer_id  INTEGER NOT NULL REFERENCES customers (customer_id),
    store_id     INTEGER REFERENCES stores (store_id),
    order_date   TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('completed', 'cancelled', 'pending'))
);

-- Lines of an order; unit_price is the price actually charged (it may include a discount).
CREATE TABLE order_items (
    order_id    INTEGER NOT NULL REFERENCES orders (order_id),
    book_id     INTEGER NOT NULL REFERENCES books (book_id),
    quantity    INTEGER NOT NULL CHECK (quantity > 0),
    unit_price  REAL NOT NULL CHECK (unit_price > 0),
    PRIMARY KEY (order_id, book_id)
);
