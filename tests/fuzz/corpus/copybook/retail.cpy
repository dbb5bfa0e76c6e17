       01  HEADER.
      * DATEFORMAT YYYY-MM-DD-HH.MI.SS.FFFFFF
           05  HDR-TIMESTAMP          PIC X(26).
           05  HDR-FUNCTION           PIC X.
           05  HDR-REC-ID             PIC X(8).
           05  HDR-SOURCE             PIC X(4).
       01  CUSTOMER.
      * KEY
           05  CUST-ID                PIC 9(8).
           05  CUST-NAME              PIC X(30).
           05  BALANCE                PIC 9(7)V99.
      * YYMMDD
           05  OPENED                 PIC 9(6).
       01  ORDERS.
      * KEY
           05  ORDER-ID               PIC 9(10).
           05  CUST-ID                PIC 9(8).
           05  AMOUNT                 PIC 9(9)V99.
           05  STATUS                 PIC X.
