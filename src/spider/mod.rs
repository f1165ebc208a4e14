//! A port of the Spider evaluation parser (`process_sql.py`): the SQL structure used by
//! hardness classification and, later, exact set match.
